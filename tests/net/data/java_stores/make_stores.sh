#!/bin/sh
# Writes the JKS and PKCS12 stores beside this script with Java's keytool (run once; the files are
# committed so the tests read them without Java). See SOURCE.md.
set -eu
cd "$(dirname "$0")"
KT="keytool -J-XX:+UseSerialGC"
PW=store-secret
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
rm -f server.jks server-keypass.jks client.jks truststore.jks truststore.p12 server.p12 server.jceks server-keypass.jceks
$KT -genkeypair -keystore "$TMP/ca.jks" -storetype JKS -storepass $PW -keypass $PW -alias ca \
    -keyalg EC -groupname secp256r1 -validity 36500 -dname "CN=kafkawire JKS test CA,O=kafkawire tests" \
    -ext bc:c
$KT -exportcert -rfc -keystore "$TMP/ca.jks" -storepass $PW -alias ca -file "$TMP/ca.pem"
signed() {  # store alias dname san keypass storetype
    $KT -genkeypair -keystore "$1" -storetype "$6" -storepass $PW -keypass "$5" -alias "$2" -keyalg EC \
        -groupname secp256r1 -validity 36500 -dname "$3"
    $KT -certreq -keystore "$1" -storepass $PW -keypass "$5" -alias "$2" -file "$TMP/$2.csr"
    $KT -gencert -keystore "$TMP/ca.jks" -storepass $PW -alias ca -infile "$TMP/$2.csr" -outfile "$TMP/$2.pem" \
        -rfc -validity 36500 ${4:+-ext "SAN=$4"}
    $KT -importcert -noprompt -keystore "$1" -storepass $PW -alias ca -file "$TMP/ca.pem"
    $KT -importcert -noprompt -keystore "$1" -storepass $PW -keypass "$5" -alias "$2" -file "$TMP/$2.pem"
}
signed server.jks server "CN=localhost,O=kafkawire tests" "dns:localhost,ip:127.0.0.1" $PW JKS
signed server-keypass.jks server "CN=localhost,O=kafkawire tests" "dns:localhost,ip:127.0.0.1" key-secret JKS
signed client.jks client "CN=jks-client,O=kafkawire tests" "" $PW JKS
signed server.p12 server "CN=localhost,O=kafkawire tests" "dns:localhost,ip:127.0.0.1" $PW PKCS12
$KT -importcert -noprompt -keystore truststore.jks -storetype JKS -storepass $PW -alias ca -file "$TMP/ca.pem"
$KT -importcert -noprompt -keystore truststore.p12 -storetype PKCS12 -storepass $PW -alias ca -file "$TMP/ca.pem"
cp "$TMP/ca.pem" ca.pem
# JCEKS copies of the JKS key stores (the same keys and certificates)
$KT -importkeystore -srckeystore server.jks -srcstoretype JKS -srcstorepass $PW -destkeystore server.jceks \
    -deststoretype JCEKS -deststorepass $PW
$KT -importkeystore -srckeystore server-keypass.jks -srcstoretype JKS -srcstorepass $PW \
    -destkeystore server-keypass.jceks -deststoretype JCEKS -deststorepass $PW -srcalias server \
    -srckeypass key-secret -destkeypass key-secret
