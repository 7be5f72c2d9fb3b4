//go:build linux && !amd64

package main

func int80() result {
	return result{Op: "int80", Errno: "ENOSYS", Detail: "int $0x80 exists only on amd64"}
}
