package loadgen

import (
	"runtime"
	"sync"
)

// parallel runs f(0..n-1) on every core.
func parallel(n int, f func(int)) {
	w := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += w {
				f(i)
			}
		}(g)
	}
	wg.Wait()
}
