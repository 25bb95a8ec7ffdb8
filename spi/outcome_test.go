package spi_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/spi"
)

func TestOutcomeKind(t *testing.T) {
	tests := []struct {
		v     spi.OutcomeKind
		valid bool
		str   string
	}{
		{spi.KindOK, true, "ok"},
		{spi.KindLimit, true, "limit"},
		{spi.KindThrew, true, "threw"},
		{spi.KindInputTooLarge, true, "inputTooLarge"},
		{spi.KindInfrastructure, true, "infrastructure"},
		{0, false, "OutcomeKind(0)"},
		{6, false, "OutcomeKind(6)"},
		{-1, false, "OutcomeKind(-1)"},
	}
	for _, tt := range tests {
		t.Run(tt.str, func(t *testing.T) {
			assert.Equal(t, tt.valid, tt.v.Valid())
			assert.Equal(t, tt.str, tt.v.String())
		})
	}
}

func TestLimitKind(t *testing.T) {
	tests := []struct {
		v     spi.LimitKind
		valid bool
		str   string
	}{
		{spi.LimitCPU, true, "cpu"},
		{spi.LimitMemory, true, "memory"},
		{spi.LimitWallClock, true, "wallClock"},
		{spi.LimitFiles, true, "files"},
		{0, false, "LimitKind(0)"},
		{4, false, "LimitKind(4)"},
		{8, false, "LimitKind(8)"},
		{10, false, "LimitKind(10)"},
		{-3, false, "LimitKind(-3)"},
	}
	for _, tt := range tests {
		t.Run(tt.str, func(t *testing.T) {
			assert.Equal(t, tt.valid, tt.v.Valid())
			assert.Equal(t, tt.str, tt.v.String())
		})
	}
}

// The closed sets are never renumbered: values cross process boundaries
// (remote backends, stored reports).
func TestEnumsAreNeverRenumbered(t *testing.T) {
	assert.Equal(t, []int{1, 2, 3}, []int{int(spi.NetworkNone), int(spi.NetworkAllowlist), int(spi.NetworkOpen)})
	assert.Equal(t, []int{1, 2}, []int{int(spi.WallClockHard), int(spi.WallClockSoft)})
	assert.Equal(t, []int{1, 2, 3, 4, 5}, []int{int(spi.KindOK), int(spi.KindLimit), int(spi.KindThrew),
		int(spi.KindInputTooLarge), int(spi.KindInfrastructure)})
	assert.Equal(t, []int{1, 2, 3, 9}, []int{int(spi.LimitCPU), int(spi.LimitMemory), int(spi.LimitWallClock), int(spi.LimitFiles)})
}

func TestOutcomeConstructors(t *testing.T) {
	tests := []struct {
		name string
		got  spi.Outcome
		want spi.Outcome
	}{
		{"OK", spi.OK(json.RawMessage(`{"a":1}`)), spi.Outcome{Kind: spi.KindOK, Value: json.RawMessage(`{"a":1}`)}},
		{"OK null", spi.OK(json.RawMessage(`null`)), spi.Outcome{Kind: spi.KindOK, Value: json.RawMessage(`null`)}},
		{"Limited cpu", spi.Limited(spi.LimitCPU), spi.Outcome{Kind: spi.KindLimit, Limit: spi.LimitCPU}},
		{"Limited memory", spi.Limited(spi.LimitMemory), spi.Outcome{Kind: spi.KindLimit, Limit: spi.LimitMemory}},
		{"Limited wall clock", spi.Limited(spi.LimitWallClock), spi.Outcome{Kind: spi.KindLimit, Limit: spi.LimitWallClock}},
		{"Threw with name", spi.Threw("TypeError", "x is not a function"),
			spi.Outcome{Kind: spi.KindThrew, Name: "TypeError", Message: "x is not a function"}},
		{"Threw without name", spi.Threw("", "boom"), spi.Outcome{Kind: spi.KindThrew, Message: "boom"}},
		{"InputTooLarge", spi.InputTooLarge(), spi.Outcome{Kind: spi.KindInputTooLarge}},
		{"Infrastructure", spi.Infrastructure("engine crashed"),
			spi.Outcome{Kind: spi.KindInfrastructure, Message: "engine crashed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
			assert.True(t, tt.got.Kind.Valid())
		})
	}
}

// The constructors carry the value they are given and nothing else: the
// effect, not the SPI, validates and bounds it.
func TestOutcomeConstructorsDoNotValidate(t *testing.T) {
	assert.Equal(t, spi.LimitKind(9), spi.Limited(9).Limit)
	assert.Equal(t, json.RawMessage(`{not json`), spi.OK(json.RawMessage(`{not json`)).Value)
	assert.Nil(t, spi.OK(nil).Value)
}

func TestVersionIsSemver(t *testing.T) {
	assert.Regexp(t, regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`), spi.Version)
}
