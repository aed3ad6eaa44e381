package flash

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// PruneFeatures is the number of features the pruning predictor reads per
// tree node. From the target's hidden state at the prune layer, through the
// final norm and the LM head rows of the node's token, its siblings' and
// the draft's shadow candidates (its most likely children of the parent
// that are not in the tree), all applied to the PARENT's row (the "logit
// lens"): 0 the node's share of the softmax over those tokens, 1 its log,
// 2 its logit's margin over the best other one, 3 whether it is the lens's
// top choice; from the draft: 4 the log of the draft's probability; 5 the
// node's depth. Normalising among siblings plus shadows keeps a lone child
// from scoring trivially high.
const PruneFeatures = 6

// Pruner is the trained verification-pruning predictor: a logistic
// regression over the node features above giving the chance that a node
// is accepted once its parent is. After Layer target layers, nodes scoring
// below Threshold are dropped from the rest of the verify pass with their
// descendants, never the draft's main path, never more than MaxFrac of the
// tree, never below MinKeep rows. Verification still checks a pruned node
// against its parent's row, and an accepted one ends the step, so the
// output is unchanged: pruning only risks accepting fewer tokens.
type Pruner struct {
	Layer     int       `json:"layer"`     // target layers run before pruning
	Mean      []float64 `json:"mean"`      // (PruneFeatures) feature standardisation
	Std       []float64 `json:"std"`       // (PruneFeatures)
	Weights   []float64 `json:"weights"`   // (PruneFeatures)
	Bias      float64   `json:"bias"`      //
	Threshold float64   `json:"threshold"` // nodes scoring below are pruned
	MaxFrac   float64   `json:"max_frac"`  // most of a tree's nodes pruned in one step
	MinKeep   int       `json:"min_keep"`  // fewest rows kept (the pending token included)
	Confident float64   `json:"confident"` // prune a node's children only when the lens's top share there is at least this
	Samples   int       `json:"samples"`   // training nodes
	Layers    int       `json:"layers"`    // the target's depth it was trained for
	Version   int       `json:"version"`   // feature set
}

// pruneVersion is the feature set's version: a stored predictor trained
// on other features is refused.
const pruneVersion = 1

// Validate checks a predictor (loaded from a file, say) against a target
// of the given depth.
func (p *Pruner) Validate(layers int) error {
	if p.Version != pruneVersion {
		return fmt.Errorf("flash: pruner of feature set %d, want %d (calibrate again)", p.Version, pruneVersion)
	}
	if len(p.Mean) != PruneFeatures || len(p.Std) != PruneFeatures || len(p.Weights) != PruneFeatures {
		return fmt.Errorf("flash: pruner has %d/%d/%d feature weights, want %d", len(p.Mean), len(p.Std), len(p.Weights), PruneFeatures)
	}
	for _, xs := range [][]float64{p.Mean, p.Std, p.Weights, {p.Bias, p.Threshold, p.MaxFrac, p.Confident}} {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return errors.New("flash: pruner has a non-finite parameter")
			}
		}
	}
	for _, sd := range p.Std {
		if sd <= 0 {
			return errors.New("flash: pruner has a non-positive feature scale")
		}
	}
	if p.Layer < 1 || p.Layer >= layers {
		return fmt.Errorf("flash: pruner layer %d outside [1, %d)", p.Layer, layers)
	}
	if p.Layers != 0 && p.Layers != layers {
		return fmt.Errorf("flash: pruner trained for a %d-layer target, this one has %d", p.Layers, layers)
	}
	if p.MaxFrac < 0 || p.MaxFrac > 1 || p.MinKeep < 1 || p.Threshold < 0 || p.Threshold > 1 {
		return fmt.Errorf("flash: pruner safeguards out of range (max_frac %v, min_keep %d, threshold %v)", p.MaxFrac, p.MinKeep, p.Threshold)
	}
	return nil
}

// Score is the predicted chance that a node with features f is accepted
// once its parent is.
func (p *Pruner) Score(f []float64) float64 {
	z := p.Bias
	for i, w := range p.Weights {
		z += w * (f[i] - p.Mean[i]) / p.Std[i]
	}
	if math.IsNaN(z) {
		return 1 // garbage in: keep the node, never prune on it
	}
	return 1 / (1 + math.Exp(-z))
}

// PruneSample is one tree node seen during a speculative run: its features
// at the prune layer, and whether the target accepted it. Only nodes whose
// parent the target reached are sampled (the others are not decided).
type PruneSample struct {
	Step     int                    `json:"step"`
	Features [PruneFeatures]float64 `json:"features"`
	Accepted bool                   `json:"accepted"`
}

// PruneReport is how a trained predictor does on held-out steps, for the
// question "does this node survive verification?" (score ≥ threshold).
type PruneReport struct {
	Train, Test    int     // samples
	Positives      float64 // share of held-out samples that survived
	Precision      float64 // of nodes predicted to survive, how many did
	Recall         float64 // of nodes that survived, how many were predicted to
	PrunedShare    float64 // share of held-out nodes scoring below the threshold
	PrunedAccepted float64 // share of held-out survivors scoring below it (what pruning would lose)
}

// TrainOptions tune TrainPruner.
type TrainOptions struct {
	Layer      int     // the prune layer the samples were taken at
	Layers     int     // the target's depth
	HoldOut    float64 // share of steps held out for the report (default 0.25)
	Recall     float64 // survivors the threshold must keep on the training steps (default 0.98)
	Iterations int     // gradient steps (default 400)
}

// TrainPruner fits the predictor to samples by logistic regression and
// picks the highest threshold that keeps opts.Recall of the training
// survivors. The last HoldOut of the steps (by step number) are held out
// and reported on.
func TrainPruner(samples []PruneSample, o TrainOptions) (*Pruner, PruneReport, error) {
	if o.HoldOut <= 0 || o.HoldOut >= 1 {
		o.HoldOut = 0.25
	}
	if o.Recall <= 0 || o.Recall > 1 {
		o.Recall = 0.98
	}
	if o.Iterations <= 0 {
		o.Iterations = 400
	}
	var rep PruneReport
	if len(samples) < 20 {
		return nil, rep, fmt.Errorf("flash: %d pruning samples are too few to train on (want ≥ 20)", len(samples))
	}
	steps := map[int]bool{}
	for _, s := range samples {
		steps[s.Step] = true
	}
	order := make([]int, 0, len(steps))
	for s := range steps {
		order = append(order, s)
	}
	slices.Sort(order)
	cut := order[int(float64(len(order))*(1-o.HoldOut))]
	var train, test []PruneSample
	for _, s := range samples {
		if s.Step < cut {
			train = append(train, s)
		} else {
			test = append(test, s)
		}
	}
	pos := 0
	for _, s := range train {
		if s.Accepted {
			pos++
		}
	}
	if len(train) == 0 || len(test) == 0 || pos == 0 || pos == len(train) {
		return nil, rep, fmt.Errorf("flash: pruning samples need both accepted and rejected nodes on training and held-out steps (%d train, %d of them accepted, %d held out)", len(train), pos, len(test))
	}
	p := &Pruner{Layer: o.Layer, Layers: o.Layers, Version: pruneVersion, MaxFrac: 0.5, MinKeep: 4, Confident: 0.5,
		Mean: make([]float64, PruneFeatures), Std: make([]float64, PruneFeatures), Weights: make([]float64, PruneFeatures), Samples: len(train)}
	for _, s := range train {
		for i, f := range s.Features {
			p.Mean[i] += f
		}
	}
	for i := range p.Mean {
		p.Mean[i] /= float64(len(train))
	}
	for _, s := range train {
		for i, f := range s.Features {
			p.Std[i] += (f - p.Mean[i]) * (f - p.Mean[i])
		}
	}
	for i := range p.Std {
		p.Std[i] = math.Sqrt(p.Std[i]/float64(len(train))) + 1e-6
	}
	// Batch gradient descent on the L2-regularised log loss; the features
	// are standardised, so one step size suits all.
	const lr, l2 = 0.5, 1e-3
	grad := make([]float64, PruneFeatures)
	for range o.Iterations {
		clear(grad)
		var gb float64
		for _, s := range train {
			y := 0.0
			if s.Accepted {
				y = 1
			}
			e := p.Score(s.Features[:]) - y
			for i, f := range s.Features {
				grad[i] += e * (f - p.Mean[i]) / p.Std[i]
			}
			gb += e
		}
		n := float64(len(train))
		for i := range p.Weights {
			p.Weights[i] -= lr * (grad[i]/n + l2*p.Weights[i])
		}
		p.Bias -= lr * gb / n
	}
	// Threshold: the highest that keeps o.Recall of training survivors.
	var posScores []float64
	for _, s := range train {
		if s.Accepted {
			posScores = append(posScores, p.Score(s.Features[:]))
		}
	}
	slices.Sort(posScores)
	p.Threshold = posScores[int(math.Floor((1-o.Recall)*float64(len(posScores))))]
	p.Threshold = math.Nextafter(p.Threshold, 0) // the survivor at the cut is kept
	rep = Evaluate(p, test)
	rep.Train = len(train)
	return p, rep, p.Validate(max(o.Layers, o.Layer+1))
}

// Evaluate reports how p does on samples.
func Evaluate(p *Pruner, samples []PruneSample) PruneReport {
	var tp, fp, fn, pos, below int
	for _, s := range samples {
		keep := p.Score(s.Features[:]) >= p.Threshold
		if !keep {
			below++
		}
		switch {
		case keep && s.Accepted:
			tp++
		case keep && !s.Accepted:
			fp++
		case !keep && s.Accepted:
			fn++
		}
		if s.Accepted {
			pos++
		}
	}
	r := PruneReport{Test: len(samples)}
	n := float64(max(len(samples), 1))
	r.Positives = float64(pos) / n
	r.PrunedShare = float64(below) / n
	if tp+fp > 0 {
		r.Precision = float64(tp) / float64(tp+fp)
	}
	if pos > 0 {
		r.Recall = float64(tp) / float64(pos)
		r.PrunedAccepted = float64(fn) / float64(pos)
	}
	return r
}
