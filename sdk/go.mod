module github.com/skillhost/skillhost/sdk

go 1.26.8

require (
	github.com/extism/go-pdk v1.1.3
	github.com/google/go-cmp v0.7.0
)
