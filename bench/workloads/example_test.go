package workloads_test

import (
	"encoding/json"
	"fmt"

	"github.com/sandbank/sandbank/bench/workloads"
)

// The expected value of the reshape workload, which every translation
// returns.
func ExampleReshapeExpected() {
	var v struct {
		N      int `json:"n"`
		Groups int `json:"groups"`
	}
	if err := json.Unmarshal(workloads.ReshapeExpected(), &v); err != nil {
		fmt.Println(err)
		return
	}
	script, _ := workloads.Reshape("starlark")
	fmt.Println(v.N, "rows,", v.Groups, "groups; starlark script starts with", string(script[:9]))
	// Output: 10000 rows, 17 groups; starlark script starts with # reshape
}
