package journal

// setFaults installs the fault-injection hook (see faults) for this process.
func setFaults(hit func(p faultPoint, seq uint64), cut func(seq uint64, size int) int) {
	faults = faultHooks{hit: hit, cut: cut}
}

// setFile swaps the writer's file, to make writes and fsyncs fail.
func (w *Writer) setFile(f syncFile) { w.f = f }
