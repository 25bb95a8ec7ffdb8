package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/storage"
)

// A MemoryStore is bounded: past a bound, the least recently used script
// is evicted. Delete removes one.
func ExampleNewMemoryStore() {
	store, err := storage.NewMemoryStore(&storage.MemoryStoreOptions{MaxEntries: 2})
	if err != nil {
		panic(err)
	}
	a, _ := store.Put([]byte("a"))
	b, _ := store.Put([]byte("b"))
	_, _ = store.ReadScript(context.Background(), a) // a is now the most recently used
	c, _ := store.Put([]byte("c"))                   // evicts b

	for _, addr := range []record.Address{a, b, c} {
		_, err := store.ReadScript(context.Background(), addr)
		fmt.Println(errors.Is(err, fs.ErrNotExist))
	}
	fmt.Println(store.Delete(a), store.Delete(a))
	fmt.Println(store.Usage())
	// Output:
	// false
	// true
	// false
	// true false
	// 1 1
}

// A DirStore refuses a script over its bound, in Put and in ReadScript.
func ExampleNewDirStore() {
	dir, err := os.MkdirTemp("", "scripts")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := storage.NewDirStore(dir, &storage.DirStoreOptions{MaxScriptBytes: 8})
	if err != nil {
		panic(err)
	}
	_, err = store.Put([]byte("a script of 25 bytes long"))
	fmt.Println(errors.Is(err, effect.ErrScriptTooLarge))
	addr, err := store.Put([]byte("small"))
	fmt.Println(addr, err)
	// Output:
	// true
	// sha256:81db8ebbbbc69c6c6ad4a6aa92b76e0c08af547da236b9e2c9dbe1d8285a8130 <nil>
}
