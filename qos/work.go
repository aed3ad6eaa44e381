package qos

// streamRW reads and writes every word of region once (out-of-cache
// streaming, like a compositor blending layers into a frame buffer), and
// returns a fold of the values so the work cannot be optimized away.
func streamRW(region []uint64, salt uint64) uint64 {
	var acc uint64
	n := len(region) &^ 7
	for i := 0; i < n; i += 8 {
		p := (*[8]uint64)(region[i : i+8])
		p[0] = p[0]*0x9E3779B97F4A7C15 + salt
		p[1] = p[1]*0x9E3779B97F4A7C15 + salt
		p[2] = p[2]*0x9E3779B97F4A7C15 + salt
		p[3] = p[3]*0x9E3779B97F4A7C15 + salt
		p[4] = p[4]*0x9E3779B97F4A7C15 + salt
		p[5] = p[5]*0x9E3779B97F4A7C15 + salt
		p[6] = p[6]*0x9E3779B97F4A7C15 + salt
		p[7] = p[7]*0x9E3779B97F4A7C15 + salt
		acc ^= p[0] ^ p[7]
	}
	return acc
}

// compute runs iters rounds of register-only integer work (four
// independent xorshift chains): the frame's layout, input and logic, which
// touch no memory beyond the core's own caches.
func compute(iters int, seed uint64) uint64 {
	a, b, c, d := seed|1, seed^0x5555, seed+0x1234567, ^seed
	for range iters {
		a ^= a << 13
		a ^= a >> 7
		a ^= a << 17
		b ^= b << 13
		b ^= b >> 7
		b ^= b << 17
		c = c*0x2545F4914F6CDD1D + a
		d = d*0x9E3779B97F4A7C15 + b
	}
	return a ^ b ^ c ^ d
}
