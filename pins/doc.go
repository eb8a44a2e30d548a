// Package pins describes a pinned install of Drama 3 and verifies files
// against it.
//
// A pins file (format "drama-pins/1", JSON) names a Hugging Face repository,
// the exact commit it was taken from, its licence, and every file by path,
// size and sha256 (for an LFS file, the Hub's LFS oid, which is the sha256 of
// the content; a small file may also carry its git blob sha1). It also says
// what a variant needs later: the engine, its serve flags, its resident
// memory estimate, and the totals the model's notes give, so that a listing
// that disagrees with them is caught.
//
// Pins are complete when every file carries its size and sha256. Pins
// without per-file digests are incomplete: they can be completed from the
// Hub's listing of the pinned commit (package hub) or made from files on
// disk (Make), but they cannot verify anything. No digest is ever invented.
// The lock file (LockFileName) is the complete pins a verified fetch
// writes into a variant's directory.
//
// Verify checks a directory against pins at one of two levels: size (fast)
// or sha256 (reads every byte, files in parallel). A verified-state record
// kept in the directory's .drama folder remembers each file's size, mtime,
// inode and sha256 after a full check, so a later size-level check reports an
// unchanged file as still sha256-verified; any change to the file's size,
// mtime or inode drops the record.
package pins
