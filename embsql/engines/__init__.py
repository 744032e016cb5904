"""engines: one module per SQL engine (duckdb, postgres, spark); the dispatch is embsql.engines.connections."""
