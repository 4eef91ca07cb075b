"""ssl.principal.mapping.rules as Kafka 4.3.1's SslPrincipalMapper parses and applies them
(cases after Kafka's SslPrincipalMapperTest and the rule syntax of its documentation)."""
import pytest

from kafkawire.net.config import ConfigError
from kafkawire.net.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper

DN = "CN=kafka-client,OU=Eng,O=Example,L=Town,ST=State,C=US"


@pytest.mark.parametrize("rules, name, expected", [
    (None, DN, DN),                                                     # unset: DEFAULT
    ("DEFAULT", DN, DN),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,DEFAULT", DN, "kafka-client@eng"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1/U", DN, "KAFKA-CLIENT"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", DN, DN),          # the first rule does not match
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),.*$/$1/", DN, "kafka-client"),
    # a $n past the pattern's groups is literal text; $12 with one group is group 1 then "2"
    ("RULE:^CN=([^,]*),.*$/$1-$3/", DN, "kafka-client-$3"),
    ("RULE:^CN=([^,]*),.*$/$12/", DN, "kafka-client2"),
    ("RULE:^CN=([^,]*),.*$/\\$1 is $1/", DN, "$1 is kafka-client"),      # an escaped $ is literal
    ("RULE:^CN=([^,]*)\\,OU.*$/$1/", DN, "kafka-client"),                # an escaped comma in a pattern
    ("  RULE:^CN=([^,]*),.*$/$1/L ,  DEFAULT  ", DN, "kafka-client"),    # spaces around rules
    ("RULE:^CN=(?<cn>[^,]*),.*$/${cn}/", DN, "kafka-client"),           # a Java named group
])
def test_rules_map_a_name_as_kafka_does(rules, name, expected):
    assert SslPrincipalMapper(rules).name(name) == expected


def test_a_name_no_rule_matches_is_refused():
    mapper = SslPrincipalMapper("RULE:^CN=(.*?),OU=Other$/$1/")
    with pytest.raises(NoMatchingRule, match="No rules apply to CN=kafka-client"):
        mapper.name(DN)


@pytest.mark.parametrize("rules, fragment", [
    ("DEFAULTS", "invalid rule: `DEFAULTS`"),
    ("RULE:^CN=(.*?)$/$1/Lxyz", "unmatched substring: `xyz`"),
    ("RULE:^CN=(.*?)$/$1", "invalid rule"),
    ("RULE:^CN=(.*?$/$1/", "does not compile"),
    ("RULE:^CN=(.*?)$/$1/,nonsense", "invalid rule: `nonsense`"),
])
def test_a_rule_that_does_not_parse_names_the_key(rules, fragment):
    with pytest.raises(ConfigError, match="ssl.principal.mapping.rules") as refused:
        SslPrincipalMapper(rules)
    assert fragment in str(refused.value)
