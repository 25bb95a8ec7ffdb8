package jsdepth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSteps(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"", 0},
		{"x", 0},
		{"a; b\n c)]}", 0},            // separators and closings open nothing
		{"a.b(c)", 2},                 // . and (
		{"!!!x", 3},                   // prefix chains
		{"typeof typeof x", 2},        // keywords
		{"typeofx", 0},                // only whole words
		{"a=>b=>c", 4},                // = and > of each arrow
		{`"a.b"`, 3},                  // strings count too: nothing to decoy
		{"/* !! */", 6},               // and comments
		{"é.ü", 1},                    // non-ASCII bytes are words
		{"let x: A<B<C>> = 1", 7},     // let : < < > > =
		{"a ? b : c ? d : e", 4},      // ternary chains
		{"class extends class {}", 4}, // class extends class {
	} {
		assert.Equal(t, tc.want, Steps([]byte(tc.src), 100), tc.src)
	}
	// It stops counting past the limit.
	assert.Equal(t, 11, Steps([]byte(strings.Repeat("!", 1000)), 10))
}

func TestScopes(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"", 0},
		{"a => b", 1},
		{"f(a => 1, b => 2)", 3},           // siblings in one bracket add up
		{"a=>a=>(b=>[c=>1])", 6},           // 2 arrows, (, 1 arrow, [, 1 arrow
		{"function f() { class C {} }", 4}, // function ( ) { class {
		{`")))" + (a=>(a=>1))`, 4},         // never below zero
		{"x = functional + classy", 0},     // only whole words
	} {
		assert.Equal(t, tc.want, Scopes([]byte(tc.src), 100), tc.src)
	}
	assert.Equal(t, 11, Scopes([]byte(strings.Repeat("a=>", 1000)), 10))
}
