// Package fenced reads the fenced code blocks of a Markdown text. It is
// for the tests that run README's quick starts as pasted (the root
// package's Go blocks, cmd/sandbank's shell blocks).
package fenced

import "strings"

// Blocks returns the contents of md's blocks fenced by a line "```lang"
// and a line "```", in order, without the fences.
func Blocks(md, lang string) []string {
	var blocks, cur []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		switch {
		case !in && l == "```"+lang:
			in, cur = true, nil
		case in && l == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, l)
		}
	}
	return blocks
}
