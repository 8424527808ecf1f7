//go:build !linux

package main

import "os"

// stdoutClosed says whether standard output is unusable.
func stdoutClosed() bool {
	_, err := os.Stdout.Stat()
	return err != nil
}
