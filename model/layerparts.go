package model

import "shade/quant"

// LayerMatrix is one matrix of a block: its tensor name without the
// "blk.N." prefix and the Layer field it fills.
type LayerMatrix struct {
	Name string
	M    *quant.Matrix
}

// LayerVector is one small vector of a block (a norm or a bias).
type LayerVector struct {
	Name string
	V    *[]float32
}

// Matrices lists the layer's matrices with their tensor names, so that a
// streamer can point them at a buffer it filled from the file.
func (l *Layer) Matrices() []LayerMatrix {
	return []LayerMatrix{
		{"attn_q.weight", &l.Wq}, {"attn_k.weight", &l.Wk}, {"attn_v.weight", &l.Wv},
		{"attn_output.weight", &l.Wo}, {"ffn_gate.weight", &l.Gate}, {"ffn_up.weight", &l.Up},
		{"ffn_down.weight", &l.Down},
	}
}

// Vectors lists the layer's vectors that the architecture has (the
// optional ones only when loaded), with their tensor names.
func (l *Layer) Vectors() []LayerVector {
	all := []LayerVector{
		{"attn_norm.weight", &l.AttnNorm}, {"ffn_norm.weight", &l.FFNNorm},
		{"attn_q.bias", &l.Bq}, {"attn_k.bias", &l.Bk}, {"attn_v.bias", &l.Bv},
		{"attn_q_norm.weight", &l.QNorm}, {"attn_k_norm.weight", &l.KNorm},
	}
	out := all[:0]
	for _, v := range all {
		if *v.V != nil {
			out = append(out, v)
		}
	}
	return out
}
