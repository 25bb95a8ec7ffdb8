package tenant_test

import (
	"fmt"

	"github.com/sandbank/sandbank/tenant"
)

// A tenants document holds key digests only; the key itself goes to the
// tenant.
func ExampleSet_Authenticate() {
	key, digest, err := tenant.NewKey()
	if err != nil {
		panic(err)
	}
	set, err := tenant.Parse([]byte(`{"tenants":[{"name":"acme","keys":["` + digest + `"],"engines":["goja"],"ratePerSecond":10}]}`))
	if err != nil {
		panic(err)
	}
	t, ok := set.Authenticate(key)
	fmt.Println(t.Name, ok, t.AllowsEngine("goja"), t.AllowsEngine("quickjs"))
	_, ok = set.Authenticate("sbk_not-a-key-of-anyone-0123456789abcdef")
	fmt.Println(ok)
	// Output:
	// acme true true false
	// false
}
