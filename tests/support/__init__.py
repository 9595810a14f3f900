"""Test helpers shared by several test modules (fake servers, engines, conversation strategies)."""
