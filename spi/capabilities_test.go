package spi_test

import (
	"encoding"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// Both declaration enums are text (un)marshalers, so they read as words in
// JSON and in configuration files.
var (
	_ encoding.TextMarshaler   = spi.NetworkNone
	_ encoding.TextUnmarshaler = (*spi.Network)(nil)
	_ encoding.TextMarshaler   = spi.WallClockHard
	_ encoding.TextUnmarshaler = (*spi.WallClock)(nil)
)

func TestNetwork(t *testing.T) {
	tests := []struct {
		v     spi.Network
		valid bool
		str   string
	}{
		{spi.NetworkNone, true, "none"},
		{spi.NetworkAllowlist, true, "allowlist"},
		{spi.NetworkOpen, true, "open"},
		{0, false, "Network(0)"},
		{4, false, "Network(4)"},
		{-1, false, "Network(-1)"},
	}
	for _, tt := range tests {
		t.Run(tt.str, func(t *testing.T) {
			assert.Equal(t, tt.valid, tt.v.Valid())
			assert.Equal(t, tt.str, tt.v.String())

			text, err := tt.v.MarshalText()
			if !tt.valid {
				assert.EqualError(t, err, "spi: invalid network value "+tt.str[len("Network("):len(tt.str)-1])
				assert.Nil(t, text)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.str, string(text))
			var back spi.Network
			require.NoError(t, back.UnmarshalText(text))
			assert.Equal(t, tt.v, back)
		})
	}
}

func TestNetworkUnmarshalTextRefusesUnknownWords(t *testing.T) {
	for _, in := range []string{"", "None", "NONE", " none", "none ", "closed", "Network(1)", "1"} {
		t.Run(in, func(t *testing.T) {
			n := spi.NetworkOpen
			err := n.UnmarshalText([]byte(in))
			require.Error(t, err)
			assert.Equal(t, "spi: unknown network value "+quote(in), err.Error())
			assert.Equal(t, spi.NetworkOpen, n, "a refused value leaves the target unchanged")
		})
	}
}

func TestWallClock(t *testing.T) {
	tests := []struct {
		v     spi.WallClock
		valid bool
		str   string
	}{
		{spi.WallClockHard, true, "hard"},
		{spi.WallClockSoft, true, "soft"},
		{0, false, "WallClock(0)"},
		{3, false, "WallClock(3)"},
		{-2, false, "WallClock(-2)"},
	}
	for _, tt := range tests {
		t.Run(tt.str, func(t *testing.T) {
			assert.Equal(t, tt.valid, tt.v.Valid())
			assert.Equal(t, tt.str, tt.v.String())

			text, err := tt.v.MarshalText()
			if !tt.valid {
				assert.EqualError(t, err, "spi: invalid wall clock value "+tt.str[len("WallClock("):len(tt.str)-1])
				assert.Nil(t, text)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.str, string(text))
			var back spi.WallClock
			require.NoError(t, back.UnmarshalText(text))
			assert.Equal(t, tt.v, back)
		})
	}
}

func TestWallClockUnmarshalTextRefusesUnknownWords(t *testing.T) {
	for _, in := range []string{"", "Hard", "HARD", "hard\n", "firm", "WallClock(1)", "1"} {
		t.Run(in, func(t *testing.T) {
			w := spi.WallClockSoft
			err := w.UnmarshalText([]byte(in))
			require.Error(t, err)
			assert.Equal(t, "spi: unknown wall clock value "+quote(in), err.Error())
			assert.Equal(t, spi.WallClockSoft, w, "a refused value leaves the target unchanged")
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s) // the cases above need no Go-only escapes
	return string(b)
}

func validCaps() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard,
		Memory: true, CPU: false, FreshPerRun: true}
}

func TestCapabilitiesValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*spi.Capabilities)
		want   []string // each line of the joined error; none when valid
	}{
		{"valid", func(*spi.Capabilities) {}, nil},
		{"weakest valid", func(c *spi.Capabilities) {
			*c = spi.Capabilities{Language: "x", Network: spi.NetworkOpen, WallClock: spi.WallClockSoft}
		}, nil},
		{"empty language", func(c *spi.Capabilities) { c.Language = "" },
			[]string{"spi: capabilities: empty language"}},
		{"zero network", func(c *spi.Capabilities) { c.Network = 0 },
			[]string{"spi: capabilities: invalid network value 0"}},
		{"network past the set", func(c *spi.Capabilities) { c.Network = 4 },
			[]string{"spi: capabilities: invalid network value 4"}},
		{"zero wall clock", func(c *spi.Capabilities) { c.WallClock = 0 },
			[]string{"spi: capabilities: invalid wall clock value 0"}},
		{"negative wall clock", func(c *spi.Capabilities) { c.WallClock = -1 },
			[]string{"spi: capabilities: invalid wall clock value -1"}},
		{"zero value reports every field", func(c *spi.Capabilities) { *c = spi.Capabilities{} },
			[]string{
				"spi: capabilities: empty language",
				"spi: capabilities: invalid network value 0",
				"spi: capabilities: invalid wall clock value 0",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCaps()
			tt.mutate(&c)
			err := c.Validate()
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, joinLines(tt.want), err.Error())
		})
	}
}

func joinLines(lines []string) string {
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "\n"
		}
		out += l
	}
	return out
}

func TestCapabilitiesJSON(t *testing.T) {
	c := validCaps()
	b, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"language":"javascript","network":"none","wallClock":"hard",
		"memory":true,"cpu":false,"freshPerRun":true}`, string(b))

	var back spi.Capabilities
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, c, back)

	bad := c
	bad.Network = 0
	_, err = json.Marshal(bad)
	assert.ErrorContains(t, err, "spi: invalid network value 0", "an invalid declaration cannot be written")

	err = json.Unmarshal([]byte(`{"language":"x","network":"everywhere","wallClock":"hard"}`), &back)
	assert.ErrorContains(t, err, `spi: unknown network value "everywhere"`)
	err = json.Unmarshal([]byte(`{"language":"x","network":"none","wallClock":"eventually"}`), &back)
	assert.ErrorContains(t, err, `spi: unknown wall clock value "eventually"`)
	err = json.Unmarshal([]byte(`{"language":"x","network":1,"wallClock":"hard"}`), &back)
	assert.Error(t, err, "numbers are not accepted for a text enum")
}
