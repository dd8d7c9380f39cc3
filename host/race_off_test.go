//go:build !race

package host_test

// raceDetector: the test binary runs without the race detector.
const raceDetector = false
