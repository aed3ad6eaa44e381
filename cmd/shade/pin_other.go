//go:build !linux

package main

import "errors"

func pinProcess(cpu int) (func(), error) {
	return nil, errors.New("pinning to a CPU is only supported on Linux")
}

func pinThread(cpu int) error { return errors.New("pinning to a CPU is only supported on Linux") }
