// The editor's form state as its sections change it (React's setter), apart from form.ts, which stays free of React.
import type { Dispatch, SetStateAction } from 'react';
import type { OfferForm } from './form';

export type SetForm = Dispatch<SetStateAction<OfferForm>>;
