package record

import (
	"time"

	"github.com/sandbank/sandbank/spi"
)

// LogLine is one line a script logged.
type LogLine struct {
	Level  spi.LogLevel  `json:"level"`
	Stream spi.LogStream `json:"stream"`
	// Text is the line without its newline, bounded to MaxLogLineUnits
	// UTF-16 units (then "…[truncated]") and made storable like every
	// text from a script: invalid UTF-8, lone surrogates and control
	// characters other than newline and tab become U+FFFD.
	Text string `json:"text"`
	// At is when the line arrived, from the start of the run.
	At time.Duration `json:"atNs"`
}

// LogsCut counts what a full log dropped.
type LogsCut struct {
	// Lines and Bytes are the lines dropped and the bytes of text they
	// held, as the backend handed them over.
	Lines int64 `json:"lines"`
	Bytes int64 `json:"bytes"`
}

// Stats are a run's figures. The effect measures its own (durations,
// bytes); the engine's (Startup, ScriptTime, MemoryPeakBytes, CPU) are
// present only where the engine truly measured them: zero means not known.
type Stats struct {
	// Duration is the whole run, as effect.Effect.Run measured it.
	Duration time.Duration `json:"durationNs"`
	// BackendTime is the backend call, as the effect measured it (engine
	// start-up included); zero when the backend was not called.
	BackendTime time.Duration `json:"backendNs,omitempty"`
	// InputBytes, ScriptBytes and OutputBytes size the input as JSON text,
	// the script and the canonical result.
	InputBytes  int64 `json:"inputBytes"`
	ScriptBytes int64 `json:"scriptBytes,omitempty"`
	OutputBytes int64 `json:"outputBytes,omitempty"`
	// LogLines and LogBytes count the lines kept in the record and their
	// text's bytes.
	LogLines int64 `json:"logLines,omitempty"`
	LogBytes int64 `json:"logBytes,omitempty"`

	// Startup, ScriptTime, MemoryPeakBytes, CPUUnit and CPUUnits are the
	// engine's own figures (spi.Stats).
	Startup         time.Duration `json:"startupNs,omitempty"`
	ScriptTime      time.Duration `json:"scriptNs,omitempty"`
	MemoryPeakBytes int64         `json:"memoryPeakBytes,omitempty"`
	CPUUnit         string        `json:"cpuUnit,omitempty"`
	CPUUnits        int64         `json:"cpuUnits,omitempty"`

	// HostCalls counts the host calls the script made (effect.Record.HostCalls),
	// with the bytes sent and received and the time spent in them (summed
	// over calls, which may overlap).
	HostCalls        int64         `json:"hostCalls,omitempty"`
	HostCallBytesIn  int64         `json:"hostCallBytesIn,omitempty"`
	HostCallBytesOut int64         `json:"hostCallBytesOut,omitempty"`
	HostCallTime     time.Duration `json:"hostCallNs,omitempty"`
}

// MaxLogLineUnits bounds one logged line, in UTF-16 code units; a longer
// line is cut and ends with "…[truncated]". spi.MaxLogLineBytes is large
// enough that a backend cutting at it never cuts text kept here.
const MaxLogLineUnits = 4096
