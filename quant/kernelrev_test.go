package quant

import (
	"testing"

	"shade/internal/srcdigest"
)

// TestKernelRevisionCurrent checks that kernelrev.go stamps the sources as
// they are: after a change to this package, go generate ./quant writes the
// new stamp (and CI fails until it is committed).
func TestKernelRevisionCurrent(t *testing.T) {
	d, err := srcdigest.Dir(".", "kernelrev.go")
	if err != nil {
		t.Skipf("sources not readable here: %v", err)
	}
	if d != KernelRevision() {
		t.Fatalf("KernelRevision() = %s, the sources digest to %s: run go generate ./quant", KernelRevision(), d)
	}
}
