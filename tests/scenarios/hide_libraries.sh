#!/bin/sh
# Runs COMMAND where the files of DIR whose names start with PREFIX do not
# exist, as on a machine without that library, by a private mount namespace
# (the caller runs this under `unshare -m`; nothing outside changes):
#   hide_libraries.sh DIR PREFIX COMMAND...
# DIR is covered by a tmpfs holding every other file of DIR, each bind-mounted
# from a second view of the original folder (and its symlinks, recreated).
set -eu
dir=$1 prefix=$2
shift 2
view=$(mktemp -d)
mount --bind "$dir" "$view"
mount -t tmpfs tmpfs "$dir"
for path in "$view"/* "$view"/.[!.]*; do
  [ -e "$path" ] || [ -L "$path" ] || continue
  name=${path##*/}
  case $name in "$prefix"*) continue ;; esac
  if [ -L "$path" ]; then
    ln -s "$(readlink "$path")" "$dir/$name"
  elif [ -d "$path" ]; then
    mkdir "$dir/$name" && mount --bind "$path" "$dir/$name"
  else
    : > "$dir/$name" && mount --bind "$path" "$dir/$name"
  fi
done
exec "$@"
