package goja_test

import (
	"testing"

	"github.com/sandbank/sandbank/internal/runfiles/filestest"
)

func TestFiles(t *testing.T) {
	filestest.Run(t, newBackend(t, nil), filestest.JavaScript)
}
