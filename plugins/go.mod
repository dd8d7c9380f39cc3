module github.com/skillhost/skillhost/plugins

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/skillhost/skillhost/sdk v0.0.0
	github.com/yuin/goldmark v1.8.7
	golang.org/x/text v0.14.0
)

require github.com/extism/go-pdk v1.1.3 // indirect

replace github.com/skillhost/skillhost/sdk => ../sdk
