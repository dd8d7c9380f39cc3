//go:build !linux

package bench

import "errors"

var errNoPinning = errors.New("CPU pinning needs Linux")

func allowedCPUs() ([]int, error) { return nil, errNoPinning }

func pinProcess(int, []int) error { return errNoPinning }
