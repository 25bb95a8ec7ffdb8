package spi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandbank/sandbank/spi"
	"github.com/stretchr/testify/assert"
)

func TestCheckFileName(t *testing.T) {
	for _, name := range []string{"data.csv", "a", "0", "chart-1.png", "x_y.tar.gz", strings.Repeat("a", spi.MaxFileNameBytes)} {
		assert.NoError(t, spi.CheckFileName(name), name)
	}
	for _, name := range []string{"", ".", "..", "../x", "/etc/passwd", "a/b", `a\b`, ".hidden", "-rf", "a\x00b", "a\nb", "é.csv", "a b", "a:b", strings.Repeat("a", spi.MaxFileNameBytes+1)} {
		err := spi.CheckFileName(name)
		assert.True(t, errors.Is(err, spi.ErrFileName), "%q: %v", name, err)
		if err != nil {
			assert.NotContains(t, err.Error(), "\x00", "the error text carries no raw byte of the name")
		}
	}
}

func ExampleCheckFileName() {
	for _, name := range []string{"data.csv", "../secret"} {
		if err := spi.CheckFileName(name); err != nil {
			println(err.Error())
		}
	}
}
