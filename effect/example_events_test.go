package effect_test

import (
	"context"
	"fmt"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/storage"
)

// Events arrive on a goroutine of the run's own, in order; the finished
// event is always last, and may arrive after Run returned.
func ExampleCall_events() {
	scripts := new(storage.MemoryStore)
	addr, _ := scripts.Put([]byte("script"))
	e, _ := effect.New(scripts, chatty{}, nil)
	defer e.Close()

	done := make(chan struct{})
	_, _ = e.Run(context.Background(), effect.Call{Script: addr, Events: func(ev effect.Event) {
		switch ev.Kind {
		case effect.EventLog:
			fmt.Println(ev.Kind, ev.Log.Text)
		case effect.EventFinished:
			fmt.Println(ev.Kind, ev.Record.Receipt.Outcome, "dropped:", ev.Record.EventsDropped)
			close(done)
		default:
			fmt.Println(ev.Kind)
		}
	}})
	<-done
	// Output:
	// started
	// log starting
	// log careful�
	// finished ok dropped: 0
}
