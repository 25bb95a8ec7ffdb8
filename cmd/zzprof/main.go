package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/spi"
	"github.com/tetratelabs/wazero"
)

func main() {
	mode := quickjs.ModeParked
	if len(os.Args) > 3 {
		mode = quickjs.ModeFresh
	}
	f, _ := os.Create(os.Args[len(os.Args)-1])
	pprof.StartCPUProfile(f)
	defer pprof.StopCPUProfile()
	t0 := time.Now()
	b, err := quickjs.New(&quickjs.Options{CacheDir: os.Args[1], Mode: mode})
	if err != nil {
		panic(err)
	}
	t1 := time.Now()
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("1+1"), Input: []byte("null")})
	t2 := time.Now()
	out, err = b.Evaluate(context.Background(), spi.Request{Script: []byte("1+1"), Input: []byte("null")})
	t3 := time.Now()
	fmt.Println("new", t1.Sub(t0), "eval", t2.Sub(t1), "eval2", t3.Sub(t2), out.Kind, err)
	x := make([]byte, 4<<20)
	t4 := time.Now()
	sha256.Sum256(x)
	fmt.Println("sha 4MiB", time.Since(t4))
	_ = wazero.NewRuntime
}
