-- docker-compose.yaml: the schema registries' databases, beside the console's (made once, when
-- the postgres volume is new).
CREATE DATABASE registry_source OWNER isthmus;
CREATE DATABASE registry_destination OWNER isthmus;
