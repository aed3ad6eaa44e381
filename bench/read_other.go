//go:build !amd64 || noasm || !gc

package bench
