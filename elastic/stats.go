package elastic

import "time"

// Stats is what the governor reports of its decisions, for the stats a run
// prints and the server's metrics (Governor.GovernorStats; a decoder it
// paces puts it in spec.Stats.Governor). Counts are the governor's totals
// so far (a governor may outlive one generation, as the server's does).
type Stats struct {
	Policy string `json:"policy"`
	// Baselines says where the sensor's quiet-machine latencies came from:
	// the device profile they are from (engine.ProfileCalibrated or
	// engine.ProfileMeasured), or "learned online".
	Baselines string  `json:"baselines"`
	Kp        float64 `json:"kp"`
	Ki        float64 `json:"ki"`
	// Readings are draft-layer latencies turned into contention scores
	// (CS = (T − T_base) / T_base); Contended counts those read while the
	// sensor's hysteresis said the machine was contended.
	Readings int `json:"readings"`
	// TargetReadings are target-layer readings, scored against baselines
	// learned online.
	TargetReadings int     `json:"target_readings"`
	Contended      int     `json:"contended_readings"`
	CSMean         float64 `json:"cs_mean"`
	CSP95          float64 `json:"cs_p95"`
	// Preemptions are draft passes the governor stopped.
	Preemptions int `json:"preemptions"`
	// VerifyBatch counts verify passes by the rows the governor asked for
	// (8, 16 or 32; 0: the tree as drafted).
	VerifyBatch map[int]int `json:"verify_batch"`
	// Sleeps between target layers, and their total asked-for length.
	Sleeps    int           `json:"sleeps"`
	SleepTime time.Duration `json:"sleep_ns"`
	// The token-bucket guardrail: its rate, the deficit in tokens now,
	// how often and how long a deficit relaxed the CS target, and how
	// often and how long a sustained deficit fell back to uncontrolled
	// speculation.
	GuardrailRate float64       `json:"guardrail_tok_per_s"`
	Deficit       float64       `json:"guardrail_deficit"`
	Relaxations   int           `json:"relaxations"`
	RelaxedTime   time.Duration `json:"relaxed_ns"`
	Fallbacks     int           `json:"fallbacks"`
	FallbackTime  time.Duration `json:"fallback_ns"`
	InFallback    bool          `json:"in_fallback"`
}
