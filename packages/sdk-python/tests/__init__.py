"""The SDK's tests: run by test/sdk/python.test.ts against the real service."""
