//go:build !unix

package jsfront

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }
