// Package p is apicount's test package.
package p

// C is a constant.
const C = 1

const c = 2

// V is a variable.
var V = c

// T is a type with an exported field.
type T struct{ Field int }

// M is a method.
func (T) M() {}

func (T) m() {}

// F is a function.
func F() {}
