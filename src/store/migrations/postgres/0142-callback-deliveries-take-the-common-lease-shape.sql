-- callback deliveries take the common lease shape: lease_owner and lease_until (was in_flight_until)
ALTER TABLE run_callback_deliveries RENAME COLUMN in_flight_until TO lease_until;
ALTER TABLE run_callback_deliveries ADD COLUMN lease_owner TEXT
