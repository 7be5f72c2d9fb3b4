package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// flagSet is a subcommand's flags with its help text.
type flagSet struct {
	*flag.FlagSet
	usage string
	stdio Stdio
	// repeated is the single-valued flag given a second time, if any.
	repeated string
}

func newFlagSet(name, usage string, stdio Stdio) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package would print the whole usage after an error; parse
	// reports errors in one line instead.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, usage: usage, stdio: stdio}
}

// parse parses args: -h prints the help (exit 0), a bad flag prints one
// line naming it (exit 125); ok is true when the subcommand should go on.
// A flag that takes one value given twice is an error: the flag package
// would keep the last, and "--mode read-only ... --mode danger-full-access"
// from two layers of a wrapper would silently run unsandboxed. Only flags
// whose Value is marked repeatable (listFlag) may be given again.
func (fs *flagSet) parse(args []string) (code int, ok bool) {
	restore := fs.once()
	err := fs.Parse(args)
	restore()
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(fs.stdio.Err, fs.usage)
		fs.SetOutput(fs.stdio.Err)
		fs.PrintDefaults()
		return 0, false
	case fs.repeated != "":
		fmt.Fprintf(fs.stdio.Err, "sbx %s: %s given twice: it takes one value (see sbx %s --help)\n", fs.Name(), flagName(fs.repeated), fs.Name())
		return ExitRefused, false
	default:
		fmt.Fprintf(fs.stdio.Err, "sbx %s: %v (see sbx %s --help)\n", fs.Name(), err, fs.Name())
		return ExitRefused, false
	}
}

// once wraps every single-valued flag so that a second Set fails, for the
// duration of a Parse; restore puts the flags' own Values back, which the
// help text (PrintDefaults looks at their types) and the retry hint
// (isBoolFlag) read.
func (fs *flagSet) once() (restore func()) {
	orig := map[*flag.Flag]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(interface{ repeatable() }); ok {
			return
		}
		orig[f] = f.Value
		v := &onceValue{Value: f.Value, name: f.Name, fs: fs}
		if isBoolFlag(f) {
			f.Value = onceBool{v}
		} else {
			f.Value = v
		}
	})
	return func() {
		for f, v := range orig {
			f.Value = v
		}
	}
}

// onceValue is a flag.Value that may be set once.
type onceValue struct {
	flag.Value
	name string
	seen bool
	fs   *flagSet
}

func (v *onceValue) Set(s string) error {
	if v.seen {
		v.fs.repeated = v.name
		return errors.New("given twice")
	}
	v.seen = true
	return v.Value.Set(s)
}

// onceBool keeps a bool flag a bool flag (--network, not --network=true).
type onceBool struct{ *onceValue }

func (onceBool) IsBoolFlag() bool { return true }

// flagName is how the help and the errors spell a flag: -c, --mode.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
