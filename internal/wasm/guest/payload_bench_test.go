package guest

import "testing"

// BenchmarkSizedPayload is the payload of a parked echo run, built on
// the calling goroutine ("warm") and on a new goroutine per run, as the
// effect calls a backend ("new-goroutine": its stack starts small).
func BenchmarkSizedPayload(b *testing.B) {
	n := Nonce("0123456789abcdef0123456789abcdef")
	script, input := []byte("input"), []byte(`{"a":1,"b":"x"}`)
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			_ = SizedPayload(n, script, input, false)
		}
	})
	b.Run("new-goroutine", func(b *testing.B) {
		done := make(chan []byte)
		for b.Loop() {
			go func() { done <- SizedPayload(n, script, input, false) }()
			<-done
		}
	})
}
