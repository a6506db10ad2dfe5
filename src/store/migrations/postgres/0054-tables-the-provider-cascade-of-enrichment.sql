-- tables: the provider cascade of enrichment cells
ALTER TABLE table_row_runs ADD COLUMN enrichment_details TEXT;
