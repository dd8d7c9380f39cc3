package devkit_test

import (
	"fmt"

	"github.com/skillhost/skillhost/host/devkit"
)

func ExampleFormatBytes() {
	fmt.Println(devkit.FormatBytes(812), devkit.FormatBytes(64<<20), devkit.FormatBytes(3426887))
	// Output: 812 B 64 MiB 3.3 MiB
}
