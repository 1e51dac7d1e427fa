"""JSON-LD and RDF, with no network and no database: bundled contexts and their loader, expansion of LMOS members,
conversion to N-Triples, named graphs, SPARQL prefixes, and JSONPath over the stored descriptions."""
