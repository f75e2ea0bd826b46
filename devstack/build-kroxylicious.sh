#!/bin/sh
# Compile devstack/kroxylicious/ (the gateways' main class and the plugin that keeps their ports
# on loopback) beside Kroxylicious's jars in $1, fetched from Maven Central before: `make setup`
# and the Dockerfile's proxy stage both build it so.
set -eu
jars=$1
here=$(dirname "$0")
rm -rf "$jars/launcher"
mkdir -p "$jars/launcher"
javac --release 17 -nowarn -Xlint:-removal -cp "$jars/*" -d "$jars/launcher" \
  $(find "$here/kroxylicious" -name '*.java')
cp -r "$here/kroxylicious/META-INF" "$jars/launcher/"
touch "$jars/launcher/.built"
