package sdk

// Level is the severity of a log message.
type Level int

// Log levels, lowest first.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarn
	LevelError
)

// String returns the wire name of the level ("debug", "info", "warn",
// "error"); unknown levels are "info".
func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	default:
		return "info"
	}
}
