//go:build linux && !amd64

package main

func int80() result {
	return result{Op: "int80", Errno: "ENOSYS", Detail: "int $0x80 exists only on amd64"}
}

func x32() result {
	return result{Op: "x32", Errno: "ENOSYS", Detail: "x32 exists only on amd64"}
}
