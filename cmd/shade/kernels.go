package main

import (
	"fmt"
	"io"
	"strings"

	"shade/bench"
	"shade/quant"
)

// printKernels names the kernel set in use and the CPU features it was
// chosen from (run --stats), as bench's header does.
func printKernels(w io.Writer) {
	c := bench.DetectCPU()
	fmt.Fprintf(w, "kernels     %s (%s; %s: %s; sets here: %s)\n", quant.Kernels(), c, c.Arch,
		orDash(nonEmpty(strings.Join(c.Features, " "))), strings.Join(quant.KernelSets(), ", "))
}
