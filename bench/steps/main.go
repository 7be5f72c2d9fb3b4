// Command steps prints the median wall and CPU time of each step of the
// calls an SBX_TRACE file holds (internal/steptrace: one JSON line per
// call), in the order the steps first appear, and their sums: the
// per-step half of bench/README.md's floor table.
//
// Usage: steps FILE
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: steps FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "steps:", err)
		os.Exit(1)
	}
	var order []string
	wall, cpu := map[string][]float64{}, map[string][]float64{}
	calls := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ Steps [][3]any }
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		calls++
		for _, s := range line.Steps {
			name, _ := s[0].(string)
			w, _ := s[1].(float64)
			c, _ := s[2].(float64)
			if _, ok := wall[name]; !ok {
				order = append(order, name)
			}
			wall[name] = append(wall[name], w)
			cpu[name] = append(cpu[name], c)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "step (%d calls)\twall µs p50\tcpu µs p50\tseen\t\n", calls)
	var tw0, tc0 float64
	for _, n := range order {
		w, c := median(wall[n]), median(cpu[n])
		tw0, tc0 = tw0+w, tc0+c
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%d\t\n", n, w, c, len(wall[n]))
	}
	fmt.Fprintf(tw, "sum of medians\t%.0f\t%.0f\t\t\n", tw0, tc0)
	tw.Flush()
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
