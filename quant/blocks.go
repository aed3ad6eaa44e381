package quant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Block geometry of the computed types, as in ggml-common.h.
//
//	block_q4_0 (18 bytes, 32 values): f16 d; 16 bytes of nibbles. Byte j holds
//	    value j in its low nibble and value j+16 in its high nibble; x = (q-8)*d.
//	block_q8_0 (34 bytes, 32 values): f16 d; 32 int8 q; x = q*d.
//	block_q4_K (144 bytes, 256 values): f16 d; f16 dmin; 12 bytes of 6-bit
//	    scales and mins for 8 sub-blocks of 32 (see scaleMinK4); 128 bytes of
//	    nibbles: 64-value group g uses bytes 32g..32g+31, low nibbles first,
//	    then high nibbles; x = d*scale*q - dmin*min.
//	block_q6_K (210 bytes, 256 values): 128 bytes ql (low 4 bits); 64 bytes qh
//	    (high 2 bits); 16 int8 scales, one per 16 values; f16 d;
//	    x = d*scale*(q-32).
//	block_q8_K (292 bytes, 256 values): f32 d; 256 int8 q; 16 int16 sums of
//	    each 16 q (bsums). Only used for activations.
const (
	qk4_0      = 32
	q4_0Bytes  = 18
	qk8_0      = 32
	q8_0Bytes  = 34
	qkK        = 256
	q4_KBytes  = 144
	q6_KBytes  = 210
	q8_KBytes  = 292
	kScaleSize = 12 // packed scale bytes in a Q4_K block
)

// ErrUnsupported is returned (wrapped, with the type named) for tensor types
// shade does not compute with.
var ErrUnsupported = errors.New("unsupported tensor type")

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

func f16At(b []byte) float32 { return F16ToF32(binary.LittleEndian.Uint16(b)) }

func f32At(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K
// block from its 12 packed bytes q, as ggml's get_scale_min_k4:
//
//	j < 4:  scale = q[j] & 63, min = q[j+4] & 63
//	j >= 4: scale = low nibble of q[j+4] | (top 2 bits of q[j-4]) << 4
//	        min   = high nibble of q[j+4] | (top 2 bits of q[j]) << 4
func scaleMinK4(j int, q *[kScaleSize]byte) (scale, min uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// putScaleMinK4 is the inverse of scaleMinK4 for all 8 sub-blocks at once.
// Every scale and min must be below 64.
func putScaleMinK4(q *[kScaleSize]byte, scales, mins *[8]uint8) {
	*q = [kScaleSize]byte{}
	for j := 0; j < 8; j++ {
		ls, lm := scales[j], mins[j]
		if j < 4 {
			q[j] = ls
			q[j+4] = lm
		} else {
			q[j+4] = ls&0xf | (lm&0xf)<<4
			q[j-4] |= (ls >> 4) << 6
			q[j] |= (lm >> 4) << 6
		}
	}
}

// checkSizes validates a (type, element count, byte count) triple shared by
// Dequantize and Quantize and returns the encoded size.
func checkSizes(op string, t Type, n, have int) (int, error) {
	if !t.Supported() {
		return 0, fmt.Errorf("quant: %s %v: %w", op, t, ErrUnsupported)
	}
	bs := t.BlockSize()
	if n%bs != 0 {
		return 0, fmt.Errorf("quant: %s %v: %d values is not a whole number of blocks of %d", op, t, n, bs)
	}
	need := n / bs * t.BlockBytes()
	if have < need {
		return 0, fmt.Errorf("quant: %s %v: %d values need %d bytes, buffer has %d", op, t, n, need, have)
	}
	return need, nil
}
