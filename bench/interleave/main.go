// Command interleave times commands round-robin, one run of each in turn,
// and prints each one's median and mean wall time and their ratios to a
// reference command.
//
// hyperfine runs all of one command's runs before the next command's, so on
// a shared VM whose speed drifts within a minute (this one's does, by up to
// 2x) the ratios between commands drift with it. Interleaving gives every
// command the same mix of fast and slow moments.
//
// Usage: interleave [-n RUNS] [-warmup N] [-ref NAME] [-base NAME] NAME=COMMAND...
//
// COMMAND is split on spaces (no shell). -base names a command whose median
// the last column subtracts from every other (say, a runuser wrapper both
// pay), to compare what each adds above it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

type command struct {
	name string
	argv []string
	ms   []float64
}

func main() {
	runs := flag.Int("n", 200, "timed runs of each command")
	warmup := flag.Int("warmup", 10, "untimed runs of each command first")
	ref := flag.String("ref", "bwrap", "command the ratios are to")
	base := flag.String("base", "", "command whose median is subtracted in the last column")
	flag.Parse()
	cmds, err := parse(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "interleave:", err)
		os.Exit(2)
	}
	for r := -*warmup; r < *runs; r++ {
		for _, c := range cmds {
			d, err := timeRun(c.argv)
			if err != nil {
				fmt.Fprintf(os.Stderr, "interleave: %s: %v\n", c.name, err)
				os.Exit(1)
			}
			if r >= 0 {
				c.ms = append(c.ms, d)
			}
		}
	}
	report(cmds, *ref, *base)
}

func parse(args []string) ([]*command, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no commands (NAME=COMMAND...)")
	}
	var cmds []*command
	for _, a := range args {
		name, line, ok := strings.Cut(a, "=")
		argv := strings.Fields(line)
		if !ok || name == "" || len(argv) == 0 {
			return nil, fmt.Errorf("%q is not NAME=COMMAND", a)
		}
		cmds = append(cmds, &command{name: name, argv: argv})
	}
	return cmds, nil
}

// timeRun runs argv with no input and its output discarded, and returns
// its wall time in milliseconds.
func timeRun(argv []string) (float64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	err := cmd.Run()
	return float64(time.Since(start).Nanoseconds()) / 1e6, err
}

func report(cmds []*command, ref, base string) {
	stats := map[string][2]float64{}
	for _, c := range cmds {
		stats[c.name] = [2]float64{median(c.ms), mean(c.ms)}
	}
	r, haveRef := stats[ref]
	b, haveBase := stats[base]
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	header := "command\tmedian ms\tmean ms"
	if haveRef {
		header += "\tmedian x " + ref + "\tmean x " + ref
	}
	if haveBase && haveRef {
		header += "\t(median-" + base + ") x"
	}
	fmt.Fprintln(w, header)
	for _, c := range cmds {
		s := stats[c.name]
		line := fmt.Sprintf("%s\t%.3f\t%.3f", c.name, s[0], s[1])
		if haveRef {
			line += fmt.Sprintf("\t%.2f\t%.2f", s[0]/r[0], s[1]/r[1])
		}
		if haveBase && haveRef {
			if c.name == base {
				line += "\t-"
			} else {
				line += fmt.Sprintf("\t%.2f", (s[0]-b[0])/(r[0]-b[0]))
			}
		}
		fmt.Fprintln(w, line)
	}
	w.Flush()
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}

func mean(x []float64) float64 {
	t := 0.0
	for _, v := range x {
		t += v
	}
	return t / float64(len(x))
}
