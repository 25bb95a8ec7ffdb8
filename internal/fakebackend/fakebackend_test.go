package fakebackend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

var (
	_ spi.Backend = (*Backend)(nil)
	_ spi.Warmer  = (*Backend)(nil)
	_ io.Closer   = (*Backend)(nil)
)

func TestCountsAndRequest(t *testing.T) {
	b := New(Capabilities(), Echo())
	req := spi.Request{Script: []byte("s"), Input: json.RawMessage(`{"a":1}`), Limits: spi.Limits{WallClock: time.Second}}
	out, err := b.Evaluate(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, spi.OK(req.Input), out)
	req.Input[2] = 'X' // the recorded request is a copy
	assert.Equal(t, `{"a":1}`, string(b.LastRequest().Input))
	assert.Equal(t, Counts{Calls: 1, Returned: 1}, b.Counts())

	require.NoError(t, b.Warm(context.Background()))
	require.NoError(t, b.Close())
	b.Capabilities()
	assert.Equal(t, Counts{Calls: 1, Returned: 1, Warms: 1, Closes: 1, CapabilityReads: 1}, b.Counts())
}

func TestDefaultBehavior(t *testing.T) {
	out, err := New(Capabilities(), nil).Evaluate(context.Background(), spi.Request{})
	require.NoError(t, err)
	assert.Equal(t, spi.OK(json.RawMessage("null")), out)
}

func TestCapabilitiesMutation(t *testing.T) {
	b := New(Capabilities(), nil)
	c := Capabilities()
	c.Network = spi.NetworkOpen
	b.SetCapabilities(c)
	assert.Equal(t, spi.NetworkOpen, b.Capabilities().Network)
	b.SetCapabilitiesFunc(func() spi.Capabilities { panic("boom") })
	assert.Panics(t, func() { b.Capabilities() })
	b.SetCapabilitiesFunc(nil)
	assert.Equal(t, c, b.Capabilities())
	require.NoError(t, c.Validate())
	require.NoError(t, Capabilities().Validate())
}

func TestBehaviors(t *testing.T) {
	sentinel := errors.New("x")
	_, err := New(Capabilities(), Fail(sentinel)).Evaluate(context.Background(), spi.Request{})
	assert.Same(t, sentinel, err)

	b := New(Capabilities(), Panic("p"))
	assert.PanicsWithValue(t, "p", func() { _, _ = b.Evaluate(context.Background(), spi.Request{}) })
	assert.Equal(t, 1, b.Returned(), "a panic counts as a return")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := New(Capabilities(), LateAfterCancel(spi.Limited(spi.LimitCPU))).Evaluate(ctx, spi.Request{})
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitCPU), out)
	assert.PanicsWithValue(t, "late", func() {
		_, _ = New(Capabilities(), PanicAfterCancel("late")).Evaluate(ctx, spi.Request{})
	})
}

func TestBlockUntilAndWait(t *testing.T) {
	release := make(chan struct{})
	b := New(Capabilities(), BlockUntil(release, spi.OK(json.RawMessage("1"))))
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Cancellation does not free a blocked call: only release does.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _ = b.Evaluate(ctx, spi.Request{})
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	require.NoError(t, b.WaitCalls(wctx, 1))
	assert.Equal(t, 0, b.Returned())

	short, scancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer scancel()
	assert.ErrorIs(t, b.WaitReturned(short, 1), context.DeadlineExceeded)

	close(release)
	require.NoError(t, b.WaitReturned(wctx, 1))
	<-done
}

func TestPlainHidesExtras(t *testing.T) {
	p := New(Capabilities(), nil).Plain()
	_, isWarmer := p.(spi.Warmer)
	_, isCloser := p.(io.Closer)
	assert.False(t, isWarmer)
	assert.False(t, isCloser)
}

func TestTextHelpers(t *testing.T) {
	assert.Len(t, BigText(5<<20), 5<<20)
	assert.Equal(t, 3, len(LoneSurrogate))
}
