// Package oci distributes plugin folders through OCI registries: Push puts a
// folder (plugin.yaml, its module, its signature files) into a registry as
// an OCI artifact, Pull writes one back into a folder, and Mirror keeps the
// plugins of config sources.oci pulled into a folder the plugin registry
// loads like any other (same validation, signature trust, policy and hot
// reload rules).
//
// The artifact is an OCI image manifest (image-spec 1.1) with artifactType
// ArtifactType, the empty config, and one layer per file: its media type
// says what the file is (MediaTypeManifest, MediaTypeModule,
// MediaTypeSignature) and its org.opencontainers.image.title annotation is
// the file's path inside the folder. One layer per file, not a tar: each
// file is content-addressed and verified on its own, an unchanged module is
// not uploaded again, and a pull has no archive format to parse (no links,
// no modes, no headers) — only titles, checked to be plain relative paths.
//
// A registry is untrusted: Pull refuses any other artifact type, caps the
// manifest, the layer count and each layer's size before reading it (the
// caps of a plugin folder), verifies every digest, writes through an
// os.Root into a temporary folder renamed into place, and never writes
// outside it.
//
//	res, err := oci.Push(ctx, "plugins/text", "ghcr.io/acme/text:1.2.0", oci.Options{})
//	res, err = oci.Pull(ctx, "ghcr.io/acme/text@"+res.Digest, "text", oci.Options{})
//
// Functions are safe for concurrent use; a Mirror's methods are too.
package oci
