/** The protocol name xiaozhi connections are counted under, and a token's `protocols` names. */
export const XIAOZHI_PROTOCOL = 'xiaozhi';
