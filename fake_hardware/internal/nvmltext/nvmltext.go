// Package nvmltext reads the strings NVML writes into its structures: fixed arrays of C chars.
package nvmltext

import "strings"

// String is the text of a NUL-terminated char array, such as nvmlPciInfo_t's busId.
func String(chars []int8) string {
	var b strings.Builder
	for _, c := range chars {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}
