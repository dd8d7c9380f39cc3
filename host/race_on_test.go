//go:build race

package host_test

// raceDetector: the test binary runs with the race detector, whose shadow
// memory makes RSS measurements meaningless.
const raceDetector = true
