// Prints libcontainer's cpu.shares → cpu.weight conversion (the kubelet's, through
// github.com/opencontainers/cgroups at the version Kubernetes v1.36.3 requires) for every shares
// value from 0 to 262150, one per line: the reference compare.sh holds nodelet's against.
package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/opencontainers/cgroups"
)

func main() {
	w := bufio.NewWriter(os.Stdout)
	for shares := uint64(0); shares <= 262150; shares++ {
		fmt.Fprintln(w, cgroups.ConvertCPUSharesToCgroupV2Value(shares))
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
