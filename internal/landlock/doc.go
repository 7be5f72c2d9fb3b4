// Package landlock is the one table of Landlock ABI facts (ABIs): per ABI
// version, the file-system rights, network rights and scope bits it adds,
// the first Linux release that has it, the feature (report.Feature) it
// stands for, what `sbx doctor` says of it and what a call on an older
// kernel is downgraded for. Everything else is derived from the table, the
// way go-landlock derives every per-ABI behaviour from its abiInfos:
//
//	landlock.Mask(landlock.FS, 5, landlock.Always) // the rights an ABI 5 ruleset handles
//	landlock.Granted(landlock.WriteRoot, landlock.Always) // what a writable root grants
//	landlock.Minimum(landlock.FeatureRefer)        // "Linux 5.19, Landlock ABI 2"
//
// It is pure data: it builds on every OS and imports no sbx package, so
// that report (the ground floor) can take its minimum kernels from it. The
// bit values are the kernel's (include/uapi/linux/landlock.h); a Linux test
// checks them, and that every LANDLOCK_ACCESS_* and LANDLOCK_SCOPE_*
// constant of golang.org/x/sys/unix is a row here, so a right x/sys adds
// fails the tests until it has one.
//
// Adding a right: one Right in the ABI row that introduces it (a new ABI
// row if it is new), saying which rules grant it (Grant), when sbx handles
// it (When) and, if it is granted nowhere or never handled, why (Why).
package landlock
